from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo generator's management commands (make_demo_results, demo_worker_assets)."""

    name = "demo"
    default_auto_field = "django.db.models.BigAutoField"
