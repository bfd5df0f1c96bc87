"""Admin for rerun jobs: list with filters, re-queue/cancel actions, and two staff pages linked from the job
list: a bulk rerun (runs live in the warehouse, not the ORM, so they are chosen by a form over
traces.selectors.list_runs) and the judge-vs-reviewer agreement counts."""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path

from traces import selectors as run_selectors

from . import services
from .models import ApiToken, RerunJob
from .permissions import staff_required


class BulkRerunForm(forms.Form):
    """The bulk rerun's choices; agents and benchmarks are those of the ingested runs
    (traces.selectors.filter_options), shown by their display names."""

    agent = forms.ChoiceField(required=False, help_text="the ingested runs' agents; all: every agent")
    benchmark = forms.ChoiceField(required=False, help_text="all: every benchmark")
    only_flagged = forms.BooleanField(required=False, label="Only flagged runs")
    only_with_checkpoint = forms.BooleanField(required=False, initial=True, label="Only runs with a final_model/")
    latest_only = forms.BooleanField(required=False, initial=True, label="Only the latest run of each cell")
    runs = forms.IntegerField(min_value=1, max_value=1000, initial=50, label="At most this many runs")
    limit = forms.IntegerField(min_value=1, required=False, label="Samples per run", help_text="empty: all")
    max_tokens = forms.IntegerField(min_value=1, required=False, help_text="empty: the retry ladder")
    dataset_path = forms.CharField(required=False, help_text="on the workers: a local dataset folder or a JSONL; "
                                                             "empty: their Hugging Face cache (a sample or another "
                                                             "dataset makes exploratory evaluations, never the score)")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        options = run_selectors.filter_options()
        agent_field = self.fields["agent"]
        bench_field = self.fields["benchmark"]
        assert isinstance(agent_field, forms.ChoiceField) and isinstance(bench_field, forms.ChoiceField)
        agent_field.choices = [("", "all agents")] + [(key, f"{name} ({key})") for key, name in options["agents"]]
        bench_field.choices = [("", "all benchmarks")] + list(options["benchmarks"])


def matching_runs(data: dict) -> list[run_selectors.RunSummary]:
    """The runs a bulk rerun form selects, at most ``data["runs"]``, walking list_runs page by page."""
    found: list[run_selectors.RunSummary] = []
    after = None
    while len(found) < data["runs"]:
        page, after = run_selectors.list_runs(
            agent=data["agent"] or None, benchmark=data["benchmark"] or None,
            flagged=True if data["only_flagged"] else None, latest_only=data["latest_only"], after=after, limit=100)
        found += [r for r in page if r.has_final_model or not data["only_with_checkpoint"]]
        if after is None:
            break
    return found[: data["runs"]]


@admin.register(RerunJob)
class RerunJobAdmin(admin.ModelAdmin):
    list_display = ("id", "run_id", "benchmark", "status", "samples_done", "samples_total", "old_score", "new_score",
                    "worker_host", "created_by", "created_at", "finished_at")
    list_filter = ("status", "benchmark", "provider", "worker_host", "created_at")
    search_fields = ("run_id", "reason", "worker_host", "celery_task_id")
    readonly_fields = [f.name for f in RerunJob._meta.fields]
    actions = ("requeue_selected", "cancel_selected")
    change_list_template = "admin/evaluator/rerunjob/change_list.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # jobs are queued from a run page, the bulk form, the API or `manage.py rerun`

    @admin.action(description="Re-queue selected jobs (a new job with the same settings)")
    def requeue_selected(self, request: HttpRequest, queryset) -> None:
        queued, refused = 0, []
        for job in queryset:
            try:
                services.requeue_job(job, user=request.user)
                queued += 1
            except (services.RerunRefused, services.BrokerUnavailable) as exc:
                refused.append(f"#{job.pk}: {exc}")
        self.message_user(request, f"{queued} job(s) queued.")
        for text in refused:
            self.message_user(request, text, level=messages.WARNING)

    @admin.action(description="Cancel selected jobs")
    def cancel_selected(self, request: HttpRequest, queryset) -> None:
        for job in queryset:
            services.cancel_job(job, user=request.user)
        self.message_user(request, f"Cancel sent to {queryset.count()} job(s); running jobs stop before their next sample.")

    def get_urls(self):
        return [
            path("bulk/", staff_required(self.bulk_view), name="evaluator_rerunjob_bulk"),
            path("agreement/", staff_required(self.agreement_view), name="evaluator_rerunjob_agreement"),
        ] + super().get_urls()

    def bulk_view(self, request: HttpRequest) -> HttpResponse:
        """One RerunJob per run matching the form (agent, benchmark, flagged, ...)."""
        form = BulkRerunForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            runs = matching_runs(form.cleaned_data)
            queued, failed = 0, []
            for run in runs:
                try:
                    services.queue_rerun(run_id=run.id, user=request.user, limit=form.cleaned_data["limit"],
                                         max_tokens=form.cleaned_data["max_tokens"],
                                         dataset_path=form.cleaned_data["dataset_path"])
                    queued += 1
                except services.BrokerUnavailable as exc:
                    failed.append(str(exc))
                    break  # the broker is down: the remaining runs would fail the same way
                except services.RerunRefused as exc:
                    failed.append(f"{run.id}: {exc}")
            self.message_user(request, f"{queued} rerun job(s) queued for {len(runs)} matching run(s).")
            for text in failed:
                self.message_user(request, text, level=messages.ERROR)
            return redirect("admin:evaluator_rerunjob_changelist")
        return TemplateResponse(request, "admin/evaluator/bulk_rerun.html", {
            **self.admin_site.each_context(request), "title": "Bulk rerun", "form": form,
            "opts": self.model._meta,
        })

    def agreement_view(self, request: HttpRequest) -> HttpResponse:
        """Judge vs reviewer: per scored kind, overrides that agreed or disagreed with the judge."""
        counts = run_selectors.override_agreement()
        return TemplateResponse(request, "admin/evaluator/agreement.html", {
            **self.admin_site.each_context(request), "title": "Judge vs reviewer agreement",
            "rows": [{"kind": kind, **c, "total": sum(c.values())} for kind, c in counts.items()],
            "opts": self.model._meta,
        })


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are issued by ``manage.py api_token USERNAME`` (the key is printed once); here they are listed
    and revoked (deleted)."""

    list_display = ("name", "user", "created_at", "last_used_at")
    readonly_fields = ("user", "name", "key_sha256", "created_at", "last_used_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
