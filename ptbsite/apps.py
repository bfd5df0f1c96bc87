from django.apps import AppConfig


class PtbsiteConfig(AppConfig):
    name = "ptbsite"
    verbose_name = "PostTrainBench Explorer"

    def ready(self) -> None:
        from .warehouse import checks  # noqa: F401  (registers the warehouse's system checks)
