"""Parse stage: dialogue structure (role, sentences, dialogue act, memory cues)."""

from pipelines.parse.model import Intent, ParsedSentence, ParsedTurn
from pipelines.parse.parser import DialogueParser

__all__ = ["DialogueParser", "Intent", "ParsedSentence", "ParsedTurn"]
