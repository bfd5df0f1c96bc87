"""``python manage.py api_token USERNAME [--name NAME]``: issue an API token for a staff user; prints the key."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from evaluator.models import ApiToken


class Command(BaseCommand):
    help = "Issue an API token (Authorization: Token <key>) for a staff user; the key is printed once."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="")

    def handle(self, *args, username: str, name: str, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None or not user.is_staff:
            raise CommandError(f"{username}: no such staff user")
        _, key = ApiToken.issue(user, name)
        self.stdout.write(key)
