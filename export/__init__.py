"""The static export: the public site as plain files (``manage.py export_static OUTDIR``), written by walking the
URL patterns each app declares exportable (``ptbsite.distill``) and rendering them through the live views."""
