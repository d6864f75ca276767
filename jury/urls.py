app_name = "jury"
urlpatterns: list = []
