"""The app tests' fixtures (a temporary run store, ``__main__`` restored) for the Chronic care page test."""

from tests.apps.conftest import restore_main_module, store_url  # noqa: F401
