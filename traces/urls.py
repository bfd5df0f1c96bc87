from django.urls import path

from . import views

app_name = "traces"
urlpatterns = [
    path("runs/", views.runs_list, name="runs"),
    path("analysis/", views.analysis, name="analysis"),
    path("runs/<str:run_id>/", views.run_detail, name="run"),
    path("runs/<str:run_id>/steps", views.run_steps, name="steps"),
    path("runs/<str:run_id>/steps/<int:index>/text", views.run_step_text, name="step_text"),
]
