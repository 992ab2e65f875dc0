from django.db import models


class RunSource(models.TextChoices):
    RUNNER = "runner", "Measured by a StackSelect runner"
    IMPORT = "import", "Imported from another benchmark tool"
