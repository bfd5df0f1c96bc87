"""Root URLs: the public pages of each app, the site's log in / log out, the admin, and the JSON API under /api/."""
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from .api import api

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),  # POST only (Django's LogoutView)
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("", include("evaluator.urls")),
    path("", include("traces.urls")),
    path("", include("leaderboard.urls")),
]
