"""What the runners app announces to the apps above it (benchmarks, decisions).

- `runner_available(runner=...)`: a runner enrolled or sent its probe again after the change
  was committed; pending jobs may now have somewhere to go.
- `runner_probed(runner_id=...)`: a runner's probe was stored, inside that transaction;
  decisions re-check the retest triggers that watch the fleet.
"""

from django.dispatch import Signal

runner_available = Signal()
runner_probed = Signal()
