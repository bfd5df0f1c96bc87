from django.apps import AppConfig


class ExportConfig(AppConfig):
    """The static export's command (export_static)."""

    name = "export"
