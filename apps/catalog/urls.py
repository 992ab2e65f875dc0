from django.urls import path

from apps.catalog.views import browse, curate, import_export

app_name = "catalog"

urlpatterns = [
    path("", browse.matrix, name="matrix"),
    path("compare/", browse.compare, name="compare"),
    path("cells/<int:pk>/", browse.capability_detail, name="capability"),
    path("engines/<slug:slug>/", browse.engine_detail, name="engine"),
    path("releases/<int:pk>/", browse.release_detail, name="release"),
    path("releases/<int:pk>/copy-forward/", curate.release_copy_forward, name="copy-forward"),
    path("accelerators/", browse.accelerator_list, name="accelerators"),
    path("accelerators/<slug:slug>/", browse.accelerator_detail, name="accelerator"),
    path("models/", browse.model_list, name="models"),
    path("models/<str:slug>/", browse.model_detail, name="model"),
    path("features/<slug:key>/", browse.feature_detail, name="feature"),
    path("export.<str:file_format>", import_export.matrix_export, name="export"),
    path("import/", import_export.matrix_import, name="import"),
    path("new/<str:kind>/", curate.entry_create, name="entry-create"),
    path("edit/<str:kind>/<str:ident>/", curate.entry_edit, name="entry-edit"),
]
