"""Root URLs: the public pages of each app, the site's log in / log out, the admin, and the JSON API under /api/."""
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.staticfiles import finders
from django.http import FileResponse, HttpRequest
from django.urls import include, path
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

from .api import api


@require_safe
@cache_control(public=True, max_age=86400)
def favicon(request: HttpRequest) -> FileResponse:
    """``/favicon.ico``: static/favicon.ico (32 and 16 px), for the clients that ask the root for it (issue 29)."""
    return FileResponse(open(finders.find("favicon.ico"), "rb"), content_type="image/x-icon")


urlpatterns = [
    path("favicon.ico", favicon, name="favicon"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),  # POST only (Django's LogoutView)
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("", include("evaluator.urls")),
    path("", include("traces.urls")),
    path("", include("leaderboard.urls")),
]

# The site's own error pages: its header and footer, and what was wrong with the address (ptbsite.errors).
handler400 = "ptbsite.errors.bad_request"
handler404 = "ptbsite.errors.page_not_found"
