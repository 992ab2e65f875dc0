"""What the selections app announces to, or asks of, the apps above it.

- `trace_uploaded(trace_id=...)`: sent inside the transaction that stored a workload trace
  (decisions re-check workload drift).
- `measurements_wanted(candidates=...)`: asked while a candidate page renders; a receiver (the
  evidence app) answers {candidate id: [predicted-versus-measured rows]} for the candidates
  it has measured results of. With no receiver the page simply shows no measurements.
- `team_factors_wanted(selection=...)`: asked before a selection's candidates are computed; a
  receiver (the evidence app) answers {(accelerator slug, engine slug): efficiency_fit.TeamFit}
  fitted on the team's measured runs of the selection, with the load points it saw and how far
  the refitted estimate reads them. With no receiver the roofline keeps its own.
- `stages_wanted(selections=...)`: asked while a selection page or the list renders; a receiver
  (the dashboard) answers {selection id: stage label} from the plans, evidence and decisions
  above this app, so a selection's stage follows its decision. With no receiver the pages show
  the selection's own state.
"""

from django.dispatch import Signal

trace_uploaded = Signal()
measurements_wanted = Signal()
stages_wanted = Signal()
team_factors_wanted = Signal()
