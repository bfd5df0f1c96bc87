"""Staff pages of the evaluator: jobs (list, page, live status partial, .eval log download, cancel), queuing a
rerun or a judge re-run from a run page (with the form's worker and dataset partial). (A reviewer's override is
traces.review.)
Every view answers 403 to anonymous and non-staff users; POSTs need Django's CSRF token."""
from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST


from . import eval_logs, selectors, services, workers
from ptbsite.query import ascii_int

from .models import RerunJob
from .permissions import staff_required


class FieldRefused(services.RerunRefused):
    """A form field's value refused; ``field`` names it (the re-rendered form marks that field)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _int_or_none(text: str | None, field: str, label: str) -> int | None:
    text = (text or "").strip()
    if not text:
        return None
    number = ascii_int(text)
    if number is None:
        raise FieldRefused(field, f"{label} must be a whole number of at least 1 (or empty), not {text[:40]!r}")
    return number


def _get_job(job_id: int) -> RerunJob:
    job = selectors.get_job(job_id)
    if job is None:
        raise Http404(f"no rerun job {job_id}")
    return job


@require_GET
@staff_required
def job_list(request: HttpRequest) -> HttpResponse:
    """``/reruns/?run=&status=``: rerun jobs, newest first, each named by its run (agent, benchmark, base model)."""
    run_id, status = request.GET.get("run") or None, request.GET.get("status") or None
    jobs = selectors.list_jobs(run_id=run_id, status=status)
    titles = selectors.run_titles([job.run_id for job in jobs] + ([run_id] if run_id else []))
    return render(request, "evaluator/jobs.html", {
        "jobs": [(job, titles.get(job.run_id, "")) for job in jobs], "run_id": run_id, "status": status,
        "run_title": titles.get(run_id or "", ""), "statuses": RerunJob.Status.values,
    })


@require_GET
@staff_required
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    """``/reruns/<id>/``: status, progress, timings, scores, log tail; polls its status partial while active."""
    job = _get_job(job_id)
    return render(request, "evaluator/job.html", {"job": job, "waiting": selectors.waiting_notice(job),
                                                  "run_title": selectors.run_titles([job.run_id]).get(job.run_id, "")})


@require_GET
@staff_required
def job_status(request: HttpRequest, job_id: int) -> HttpResponse:
    """``/reruns/<id>/status``: the htmx partial of the job page (polled every second while queued/running)."""
    job = _get_job(job_id)
    return render(request, "evaluator/_job_status.html", {"job": job, "waiting": selectors.waiting_notice(job)})


@require_GET
@staff_required
def rerun_form_extras(request: HttpRequest) -> HttpResponse:
    """``/reruns/form-extras?benchmark=``: the run page's rerun form part loaded by htmx: a warning when no
    worker listens on the job queue, and the dataset choice (the worker's own cache, or a local dataset of the
    benchmark under PTB_LOCAL_DATASETS_DIR; the first local one is chosen)."""
    benchmark = request.GET.get("benchmark", "")
    return render(request, "evaluator/_rerun_form_extras.html", {
        "census": workers.census(settings.PTB_JOB_QUEUE), "datasets": selectors.datasets_for(benchmark),
        "benchmark": benchmark,
    })


@require_GET
@staff_required
def job_eval_log(request: HttpRequest, job_id: int) -> FileResponse:
    """``/reruns/<id>/eval-log``: the stored inspect-ai .eval log (a zip) as a download."""
    path = services.eval_log_path(_get_job(job_id))
    if path is None or not path.is_file():
        raise Http404("this job has no stored .eval log")
    return FileResponse(path.open("rb"), as_attachment=True, filename=path.name)


@require_GET
@staff_required
def job_eval_view(request: HttpRequest, job_id: int) -> HttpResponse:
    """``/reruns/<id>/eval-log/view``: the stored .eval log read with inspect-ai: task, model, metrics and each
    sample's input, output, target and score (untrusted text, escaped; long fields cut at 2,000 characters)."""
    job = _get_job(job_id)
    path = services.eval_log_path(job)
    if path is None or not path.is_file():
        raise Http404("this job has no stored .eval log")
    return render(request, "evaluator/eval_log.html", {"job": job, "log": eval_logs.summarize(path)})


@require_POST
@staff_required
def job_cancel(request: HttpRequest, job_id: int) -> HttpResponse:
    services.cancel_job(_get_job(job_id), user=request.user)
    return redirect("evaluator:job", job_id=job_id)


@require_POST
@staff_required
def job_create(request: HttpRequest) -> HttpResponse:
    """``POST /reruns/new`` (run_id, limit, max_tokens, dataset_path or dataset_path_other): queue a rerun, go to
    its page (303).
    A refused request (a bad value, an unknown run, a benchmark no worker can rerun) answers 400 with the form
    again, its values kept and the reason above it; 503 when the broker is down (the job is kept, failed, with
    the reason)."""
    values = {"run_id": request.POST.get("run_id", ""), "limit": request.POST.get("limit", ""),
              "max_tokens": request.POST.get("max_tokens", ""),
              "dataset_path": (request.POST.get("dataset_path_other") or "").strip() or request.POST.get("dataset_path", "")}
    try:
        job = services.queue_rerun(
            run_id=values["run_id"], user=request.user, limit=_int_or_none(values["limit"], "limit", "Samples"),
            max_tokens=_int_or_none(values["max_tokens"], "max_tokens", "Max tokens"), dataset_path=values["dataset_path"],
        )
    except services.RerunRefused as exc:
        return render(request, "evaluator/rerun_form.html", {
            "error": str(exc), "values": values, "field": getattr(exc, "field", ""),
            "run": selectors.get_run(values["run_id"])}, status=400)
    except services.BrokerUnavailable as exc:
        return render(request, "evaluator/broker_down.html", {"reason": str(exc)}, status=503)
    messages.success(request, f"Rerun queued as job {job.pk}: this page follows it.")
    return redirect("evaluator:job", job_id=job.pk, permanent=False)


@require_POST
@staff_required
def run_judge(request: HttpRequest, run_id: str) -> HttpResponse:
    """``POST /reruns/runs/<run>/judge``: queue a judge re-run job, go to its page; 409 when no judge command is
    configured, 404 for an unknown run, 503 when the broker is down."""
    try:
        job = services.queue_judge(run_id=run_id, user=request.user)
    except services.RerunRefused as exc:
        if str(exc).startswith("no run "):
            raise Http404(str(exc)) from None
        return HttpResponse(str(exc), status=409, content_type="text/plain")
    except services.BrokerUnavailable as exc:
        return render(request, "evaluator/broker_down.html", {"reason": str(exc)}, status=503)
    messages.success(request, f"Judge re-run queued as job {job.pk}: this page follows it.")
    return redirect("evaluator:job", job_id=job.pk, permanent=False)
