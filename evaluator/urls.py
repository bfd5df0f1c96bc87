from django.urls import path

from . import views

app_name = "evaluator"
urlpatterns = [
    path("reruns/", views.job_list, name="jobs"),
    path("reruns/new", views.job_create, name="create"),
    path("reruns/form-extras", views.rerun_form_extras, name="form_extras"),
    path("reruns/<int:job_id>/", views.job_detail, name="job"),
    path("reruns/<int:job_id>/status", views.job_status, name="status"),
    path("reruns/<int:job_id>/eval-log", views.job_eval_log, name="eval_log"),
    path("reruns/<int:job_id>/eval-log/view", views.job_eval_view, name="eval_view"),
    path("reruns/<int:job_id>/cancel", views.job_cancel, name="cancel"),
    path("reruns/runs/<str:run_id>/judge", views.run_judge, name="judge"),
]
