import pytest
from django.urls import reverse
from alignment.services import loop
from tests.alignment.loop_support import constructed_study, executed, lenient_jury

@pytest.mark.django_db
def test_dump(researcher_client, scored_job):
    study = constructed_study(scored_job)
    executed(loop.study_rescore(study, jury=lenient_jury(), rubric_versions=list(study.rubric_versions.filter(kind="dimension"))))
    open("/tmp/loop_cmp.html","wb").write(researcher_client.get(reverse("alignment:loop_comparison", args=[study.pk])).content)
    open("/tmp/loop_rescore.html","wb").write(researcher_client.get(reverse("alignment:loop_rescore", args=[study.pk])).content)
