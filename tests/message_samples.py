"""Messages the manager and store tests append: an assistant turn with a usage omp accepts."""

from __future__ import annotations

from typing import Any

ASSISTANT: dict[str, Any] = {
    "role": "assistant", "content": [{"type": "text", "text": "hi"}], "api": "anthropic-messages",
    "provider": "anthropic", "model": "m",
    "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
              "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.001}},
    "stopReason": "stop", "timestamp": 2}
