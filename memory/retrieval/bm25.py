"""The keyword leg: PostgreSQL full text, any word of the question, rare words weighing most.

A question in plain words is an OR of its content words (the English configuration
drops stop words and stems the rest), so a segment need not hold every word to be
found. Each word weighs its inverse document frequency, read from PostgreSQL's own
statistics of the ``text_tsv`` column (``pg_stats.most_common_elems``: a constant-size
row, so the cost does not grow with memory), and a name (a capitalised word inside the
question) weighs ``NAME_BOOST`` times more. Words in more than ``COMMON_FREQ`` of all
segments still add to a segment's score but do not select segments on their own; when
every word of the question is that common, its rarest word alone selects (a question of
common words once read every segment holding any of them: all 100k, 200 ms, for "the
dentist near the gym" in the scale benchmark; now the share of its rarest word). Before the statistics exist (a new database; autovacuum
gathers them) every word weighs the same.

The noun of a "kind of" / "type of" / "sort of" frame is left out: in "what kind of art
does she make?" it says what form the answer takes, not what it is about, and a turn's
"kind words" matched it as a rare word (LoCoMo dev: such a turn was the keyword leg's
first hit for that question).

A query typed with websearch syntax (quoted phrases, ``-exclusions``, ``or``) keeps its
websearch meaning.
"""

from __future__ import annotations

import re

import asyncpg

from memory.retrieval.filters import SearchFilters
from memory.retrieval.types import Leg, LegScore, MemoryHit

_OPERATOR = re.compile(r'"|(^|\s)-\w|\bor\b', re.IGNORECASE)
_WORD = re.compile(r"[\w']+")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)$")
_FRAME = re.compile(r"\b(?:kinds?|types?|sorts?)(?=\s+of\b)", re.IGNORECASE)
NAME_BOOST = 1.5
COMMON_FREQ = 0.05
UNSEEN_FREQ = 0.01  # a word's frequency before any statistics exist
SESSION_POOL = 500  # the best matching turns the session leg groups by session


def websearch_query(query: str) -> str:
    """Plain words joined with ``or``; a query using websearch syntax is kept as typed."""
    if _OPERATOR.search(query):
        return query
    return " or ".join(_WORD.findall(query))


def weighted_words(query: str) -> tuple[list[str], list[float]]:
    """The question's words, each with its boost: ``NAME_BOOST`` for a capitalised word that
    does not start a sentence (or is written in capitals), else 1. The noun of a "kind of"
    frame is left out (the module's docstring)."""
    words, boosts = [], []
    frames = {m.start() for m in _FRAME.finditer(query)}
    for m in _WORD.finditer(query):
        if m.start() in frames:
            continue
        word = m.group()
        starts = bool(_SENTENCE_START.search(query[: m.start()]))
        name = word[:1].isupper() and (not starts or (len(word) > 1 and word.isupper()))
        words.append(word)
        boosts.append(NAME_BOOST if name else 1.0)
    return words, boosts


_TERMS = """
    WITH st AS (
        SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs
        FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'segments' AND attname = 'text_tsv'
        LIMIT 1
    ),
    terms AS (
        SELECT v.lexeme, max(x.boost) AS boost
        FROM unnest($1::text[], $2::float8[]) AS x(word, boost),
             unnest(to_tsvector('english', x.word)) AS v
        GROUP BY v.lexeme
    ),
    weighted AS (
        SELECT t.lexeme, quote_literal(t.lexeme)::tsquery AS q,
               t.boost * ln(1 + (1 - f.freq) / f.freq) AS weight, f.freq
        FROM terms t LEFT JOIN st ON true,
             LATERAL (SELECT least(greatest(coalesce(
                 st.freqs[array_position(st.elems, t.lexeme)],
                 st.freqs[array_length(st.elems, 1) + 1] / 2,
                 $3::float8), 1e-6), 0.999) AS freq) f
    ),
    selecting AS (
        SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS q FROM weighted
        WHERE freq < $4 OR (NOT EXISTS (SELECT 1 FROM weighted WHERE freq < $4)
                            AND freq <= (SELECT min(freq) FROM weighted))
    )"""

_WEIGHTED = _TERMS + """
    SELECT s.session_id, s.segment_id, s.speaker, s.text, s.ts,
           (SELECT sum(w.weight) FROM weighted w WHERE s.text_tsv @@ w.q)
             + 0.01 * ts_rank(s.text_tsv, sel.q, 1) AS rank
    FROM segments s, selecting sel
    WHERE sel.q IS NOT NULL AND s.text_tsv @@ sel.q AND {where}
    ORDER BY rank DESC, s.ts DESC
    LIMIT $5"""

# The same matching turns read twice: ranked as turns (as ``_WEIGHTED``), and the best
# ``SESSION_POOL`` of them grouped by session, each session ranked by the question's words
# it holds anywhere in those turns (each distinct word counted once, at its weight; a bit
# per word, OR-ed over the session) and given by its best turn. The pool keeps the cost of
# grouping constant however many turns match; only ids and weights are carried, and the
# text is read for the returned rows alone.
_WITH_SESSIONS = _TERMS + """,
    bits AS (
        SELECT lexeme, q, weight, (row_number() OVER (ORDER BY weight DESC, lexeme) - 1)::int AS bit FROM weighted
    ),
    matched AS (
        SELECT s.session_id, s.segment_id, s.ts, t.turn_weight, t.mask,
               t.turn_weight + 0.01 * ts_rank(s.text_tsv, sel.q, 1) AS rank
        FROM segments s CROSS JOIN selecting sel
        CROSS JOIN LATERAL (
            SELECT sum(b.weight) AS turn_weight,
                   bit_or(CASE WHEN b.bit < 63 THEN 1::bigint << b.bit ELSE 0::bigint END) AS mask
            FROM bits b WHERE s.text_tsv @@ b.q) t
        WHERE sel.q IS NOT NULL AND s.text_tsv @@ sel.q AND {where}
    ),
    pool AS MATERIALIZED (SELECT * FROM matched ORDER BY rank DESC, ts DESC LIMIT {pool}),
    top_sessions AS (
        SELECT p.session_id, (SELECT sum(b.weight) FROM bits b
                              WHERE b.bit < 63 AND p.mask & (1::bigint << b.bit) <> 0) AS coverage
        FROM (SELECT session_id, bit_or(mask) AS mask FROM pool GROUP BY session_id) p
        ORDER BY coverage DESC LIMIT $5
    ),
    best AS (
        SELECT DISTINCT ON (m.session_id) m.session_id, m.segment_id, m.ts,
               t.coverage + 0.01 * m.turn_weight AS rank
        FROM pool m JOIN top_sessions t ON t.session_id = m.session_id
        ORDER BY m.session_id, m.turn_weight DESC, m.segment_id
    ),
    picked AS (
        (SELECT false AS by_session, session_id, segment_id, ts, rank FROM pool ORDER BY rank DESC, ts DESC LIMIT $5)
        UNION ALL
        (SELECT true, session_id, segment_id, ts, rank FROM best ORDER BY rank DESC, ts DESC LIMIT $5)
    )
    SELECT p.by_session, p.session_id, p.segment_id, s.speaker, s.text, p.ts, p.rank
    FROM picked p JOIN segments s ON s.session_id = p.session_id AND s.segment_id = p.segment_id
    ORDER BY p.by_session, p.rank DESC, p.ts DESC"""

_WEBSEARCH = """
    SELECT s.session_id, s.segment_id, s.speaker, s.text, s.ts, ts_rank(s.text_tsv, q, 1) AS rank
    FROM segments s, websearch_to_tsquery('english', $1) q
    WHERE s.text_tsv @@ q AND {where}
    ORDER BY rank DESC, s.ts DESC
    LIMIT $2"""


async def bm25_leg(pool: asyncpg.Pool, query: str, filters: SearchFilters, limit: int) -> list[MemoryHit]:
    if _OPERATOR.search(query):
        where, params = filters.sql(3)
        rows = await pool.fetch(_WEBSEARCH.format(where=where), query, limit, *params)
    else:
        words, boosts = weighted_words(query)
        if not words:
            return []
        where, params = filters.sql(6)
        rows = await pool.fetch(_WEIGHTED.format(where=where), words, boosts, UNSEEN_FREQ, COMMON_FREQ, limit,
                                *params)
    return _hits(rows, Leg.BM25)


async def keyword_legs(pool: asyncpg.Pool, query: str, filters: SearchFilters,
                       limit: int) -> tuple[list[MemoryHit], list[MemoryHit]]:
    """The keyword leg and the session leg from one query: the turns best first (as
    :func:`bm25_leg`), and sessions found by what they are about, one turn each.

    A session is ranked by the question's words anywhere in it (its turns read as one
    document, each word counted once at its weight) and given by its best turn. A question
    whose answer is spread over several conversations ("where has she camped?") reaches
    each of them, and a session whose turns share out the question's words is found
    although no single turn holds them all. Websearch syntax has no session form: such a
    query finds turns only."""
    if _OPERATOR.search(query):
        return await bm25_leg(pool, query, filters, limit), []
    words, boosts = weighted_words(query)
    if not words:
        return [], []
    where, params = filters.sql(6)
    sql = _WITH_SESSIONS.format(where=where, pool=max(SESSION_POOL, limit))
    rows = await pool.fetch(sql, words, boosts, UNSEEN_FREQ, COMMON_FREQ, limit, *params)
    return (_hits([r for r in rows if not r["by_session"]], Leg.BM25),
            _hits([r for r in rows if r["by_session"]], Leg.SESSION))


def _hits(rows, leg: Leg) -> list[MemoryHit]:
    return [
        MemoryHit(
            kind="segment", id=f"{r['session_id']}/{r['segment_id']}", text=r["text"], speaker=r["speaker"],
            timestamp=r["ts"], session_id=r["session_id"], score=float(r["rank"]),
            legs={leg: LegScore(rank=i, score=float(r["rank"]))},
        )
        for i, r in enumerate(rows, start=1)
    ]
