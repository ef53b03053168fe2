from tests.voice.conftest import fixed_memory, voice_models, voice_server  # noqa: F401
