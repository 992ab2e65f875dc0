"""What the benchmarks app announces to the apps above it (evidence, decisions).

`result_uploaded` is sent inside the transaction that stores a result chunk, with `upload` and
the decoded `document`. A receiver may refuse the chunk by raising `results.UploadError`; the
whole upload is then rolled back and the runner gets a 400, so a chunk is stored only together
with its evidence.

`job_results_wanted` is asked while a job page renders; a receiver (the evidence app) answers
the job's analysed load points. With no receiver the page shows none.
"""

from django.dispatch import Signal

result_uploaded = Signal()
job_results_wanted = Signal()
