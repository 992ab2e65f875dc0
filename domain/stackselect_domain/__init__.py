"""The domain vocabulary shared by the web app (`apps/`) and the runner agent (`runner/`).

Both programs install this package; neither redefines what lives here. It never imports Django
or the runner, so it is tested alone (tests/domain/). docs/domain.md defines the terms.
"""
