from django.urls import path

from . import views

app_name = "leaderboard"
urlpatterns = [
    path("", views.index, name="index"),
    path("leaderboard/table", views.table, name="table"),
    path("plots/", views.plots_index, name="plots"),
    path("plots/time-vs-score/", views.plot_time_vs_score, name="plot-time-vs-score"),
    path("plots/usage-vs-score/", views.plot_usage_vs_score, name="plot-usage-vs-score"),
    path("plots/time-spent/", views.plot_time_spent, name="plot-time-spent"),
    path("plots/per-benchmark/", views.plot_per_benchmark, name="plot-per-benchmark"),
    path("plots/budget-and-effort/", views.plot_budget_and_effort, name="plot-budget-and-effort"),
]
