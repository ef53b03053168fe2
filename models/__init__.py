"""Where Annie's model weights come from.

Every capability (speech-to-text, text-to-speech, voice activity, end of turn,
embeddings, the LLM, diarization, speaker embeddings) has one module here with a
resolver and a loader. A resolver looks, in order, at an explicitly configured local
path, at the copy assembled from registry packages into the model cache, and finally
at the upstream download for users with internet. A model that cannot be found is a
:class:`~models.errors.ModelNotFound` naming the capability, what was looked for and
the command that fixes it.
"""
