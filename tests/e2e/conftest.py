from tests.voice.conftest import fixed_memory, intent_router, voice_models, voice_server  # noqa: F401
