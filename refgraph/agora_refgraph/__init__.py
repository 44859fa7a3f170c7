"""Reference AGORA graph: the backend's listen-mode plan, served over AG-UI.

Invariants:
- The graph never calls a networked model: EchoChatModel answers from what it
  was given, so tests can check that an answer names the notes it received.
- Every run that reaches the graph leaves one record in ``runs`` (checkpointed)
  before any node can fail, so a caller can count runs per message.
- Every run ends with ``final_written`` (= the text streamed) and
  ``final_spoken`` (a shorter, speakable form; empty for a listen-mode ack).
"""
