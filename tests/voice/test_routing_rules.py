"""The word rules that correct the small model's routing choice (no LLM needed)."""

from __future__ import annotations

import pytest

from voice.agent import asks_to_recall, asks_to_store


@pytest.mark.parametrize("message, recall, store", [
    ("Remind me what I said about the new apartment.", True, True),
    ("Please remind me who called on Monday.", True, True),
    ("What did I say about the budget?", True, False),
    ("Remind me to call mom at six.", False, True),
    ("Remember that my car is on level 3.", False, True),
    ("Where does my sister live?", False, False),
    ("Can you remember that I like tea?", False, True),
])
def test_recall_and_store_requests(message, recall, store):
    assert asks_to_recall(message) is recall
    assert asks_to_store(message) is store
