"""What staff set about models in the browser: prices of models, and the list of named
model endpoints. The defaults are data files (llm/data/prices.yaml, llm/data/endpoints.yaml)."""

from django.conf import settings
from django.db import models


class ModelPrice(models.Model):
    """A price set by staff for one exact model string. Rows are never changed: every change
    is a new row, and the newest row of a model wins over llm/data/prices.yaml."""

    model = models.CharField(max_length=200, db_index=True)
    input_per_million = models.DecimalField(max_digits=12, decimal_places=6)
    output_per_million = models.DecimalField(max_digits=12, decimal_places=6)
    # Prompt-cache prices (catalog.Price): null means the input price, so no discount on
    # reads and no surcharge on writes.
    cached_input_per_million = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True
    )
    cache_write_per_million = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True
    )
    note = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # Created by the benchmark app before this one existed: the table keeps its name.
        db_table = "benchmark_modelprice"
        ordering = ["model", "-pk"]

    def __str__(self) -> str:
        return f"{self.model}: ${self.input_per_million} in / ${self.output_per_million} out"


class ModelEndpointList(models.Model):
    """The named model endpoints as an admin saved them (YAML, the format of
    llm/data/endpoints.yaml). Rows are never changed: every save is a new row, and the
    newest replaces the file's list (llm.services.endpoints)."""

    yaml_text = models.TextField()
    note = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "benchmark_modelendpointlist"
        ordering = ["-pk"]

    def __str__(self) -> str:
        return f"Endpoint list #{self.pk}"
