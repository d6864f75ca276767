from annotation.urls.annotator import urlpatterns as annotator_urls
from annotation.urls.staff import urlpatterns as staff_urls

app_name = "annotation"

urlpatterns = annotator_urls + staff_urls
