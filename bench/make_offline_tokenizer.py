"""An offline tokenizer for the harness comparison: a small byte-level BPE trained here.

The load-test tools need a Hugging Face tokenizer to build prompts of a given token length;
none may be fetched from a hub, so this trains one on generated words (no weights, no data
set) and saves it where bench_harness_compare.py looks. Run it with a tools venv's Python,
which has `tokenizers` and `transformers`:

    /tmp/tools-guidellm/bin/python bench/make_offline_tokenizer.py [/tmp/evtok/tokenizer]
"""

from __future__ import annotations

import random
import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def main() -> None:
    target = sys.argv[1] if len(sys.argv) > 1 else "/tmp/evtok/tokenizer"
    rng = random.Random(0)
    words = ["".join(rng.choice(LETTERS) for _ in range(rng.randint(2, 9))) for _ in range(3000)]
    lines = [" ".join(rng.choice(words) for _ in range(20)) for _ in range(5000)]
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=4000,
        special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(lines, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )
    fast.save_pretrained(target)
    print(f"saved a {len(fast)}-token tokenizer to {target}")


if __name__ == "__main__":
    main()
