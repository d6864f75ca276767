from django.apps import AppConfig


class JuryConfig(AppConfig):
    name = "jury"
