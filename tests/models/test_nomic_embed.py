"""nomic-embed-text-v1.5: read from its split zip (models.nomic_embed.SplitZip) and served by
a real llama-server in embedding mode."""

from __future__ import annotations

import io
import zipfile

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from models.nomic_embed import NOMIC_DIM, NomicEmbedder, SplitZip

PART = 700


def split(data: bytes, tmp_path, first: int) -> list:
    """The parts of ``data`` (``PART`` bytes each) from part number ``first`` on, as files."""
    parts = []
    for n, start in enumerate(range(0, len(data), PART), start=1):
        if n >= first:
            path = tmp_path / f"data.zip.{n:03d}"
            path.write_bytes(data[start:start + PART])
            parts.append(path)
    return parts


def test_an_entry_in_the_last_parts_is_read_without_the_first(tmp_path):
    buffer = io.BytesIO()
    rng = np.random.default_rng(0)
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("app/first.bin", rng.bytes(3000))  # in parts that are not there
        archive.writestr("app/model.gguf", model := rng.bytes(2500))
    data = buffer.getvalue()
    offset = zipfile.ZipFile(io.BytesIO(data)).getinfo("app/model.gguf").header_offset
    first = offset // PART + 1
    assert first > 2
    with zipfile.ZipFile(io.BufferedReader(SplitZip(split(data, tmp_path, first), first, PART))) as archive:
        assert archive.read("app/model.gguf") == model


@settings(max_examples=60, deadline=None)
@given(st.binary(min_size=1, max_size=5000), st.integers(1, 4), st.integers(0, 6000), st.integers(0, 3000))
def test_a_split_file_reads_as_the_whole_with_zeros_before_its_parts(tmp_path_factory, data, first, at, size):
    tmp_path = tmp_path_factory.mktemp("parts")
    parts = split(data, tmp_path, first)
    if not parts:
        return
    reader = SplitZip(parts, first, PART)
    reader.seek(at)
    got = reader.read(size)
    whole = bytes(min(len(data), (first - 1) * PART)) + data[(first - 1) * PART:]
    assert got == whole[at:at + size]
    assert reader.tell() == min(at + size, max(at, len(whole)))


async def test_served_embeddings_find_the_line_that_answers(model_settings, tmp_path):
    nomic = await NomicEmbedder.start(model_settings, tmp_path)
    try:
        lines = ["Priya said: My sister lives in Lisbon now, she moved there in March.",
                 "you said: I parked the car on level four of the garage.",
                 "Tom said: The camping trip is off because of the rain."]
        docs = np.asarray(nomic.documents.embed(lines))
        query = np.asarray(nomic.queries.embed(["Where does my sister live?"])[0])
        assert docs.shape == (3, NOMIC_DIM)
        assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-3)
        assert int(np.argmax(docs @ query)) == 0
        assert nomic.documents.name != nomic.queries.name  # cached apart: the prefixes differ
    finally:
        await nomic.close()
