"""Synthetic, reproducible prompts sized in tokens.

Prompts are built from a fixed vocabulary of short, common English words because each of them
is one token in the usual BPE tokenizers, so "one word ~ one token" holds closely and the
simulated engine can count tokens as whitespace-separated words.
"""

from __future__ import annotations

import random
from typing import Protocol

from stackselect_runner.harness.specs import RequestSpec

_WORDS = """
    the of and to in is it you that he was for on are with as his they be at one have this from
    or had by hot word but what some we can out other were all there when up use your how said
    an each she which do their time if will way about many then them write would like so these
    her long make thing see him two has look more day could go come did number sound no most
    people my over know water than call first who may down side been now find any new work part
    take get place made live where after back little only round man year came show every good me
    give our under name very through just form great think say help low line differ turn cause
    much mean before move right boy old too same tell does set three want air well also play
    small end put home read hand port large spell add even land here must big high such follow
    act why ask men change went light kind off need house picture try us again animal point
    mother world near build self earth father head stand own page should country found answer
    school grow study still learn plant cover food sun four between state keep eye never last
    let thought city tree cross farm hard start might story saw far sea draw left late run
"""
VOCABULARY: tuple[str, ...] = tuple(_WORDS.split())


class PromptBuilder(Protocol):
    """Turns a request spec into prompt text; pluggable so a replay of real prompts can be used."""

    def build(self, request: RequestSpec, shared_prefix_tokens: int, salt: str = "") -> str: ...


class VocabularyPromptBuilder:
    """Seeded word prompts; requests of one prefix group start with the same words.

    `salt` keeps warm-up prompts apart from measured ones so warm-up cannot pre-fill a
    prefix cache that the measurement window is meant to exercise.
    """

    def __init__(self, seed: int = 0, vocabulary: tuple[str, ...] = VOCABULARY) -> None:
        if not vocabulary:
            raise ValueError("vocabulary must not be empty")
        self.seed = seed
        self.vocabulary = vocabulary

    def _words(self, key: str, count: int) -> list[str]:
        return random.Random(f"{self.seed}:{key}").choices(self.vocabulary, k=count)

    def build(self, request: RequestSpec, shared_prefix_tokens: int, salt: str = "") -> str:
        prefix_length = 0
        if request.prefix_group is not None:
            prefix_length = min(shared_prefix_tokens, request.input_tokens)
        prefix = self._words(f"{salt}prefix:{request.prefix_group}", prefix_length)
        own = self._words(f"{salt}request:{request.index}", request.input_tokens - prefix_length)
        return " ".join(prefix + own)
