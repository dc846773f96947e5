from django.apps import AppConfig


class BeliefsConfig(AppConfig):
    name = "beliefs"
    default_auto_field = "django.db.models.BigAutoField"
