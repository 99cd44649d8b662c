"""toolwire inside the gateways users already run, with no other hop (``docs/litellm.md``).

- :mod:`~toolwire.gateway.litellm`: ``ToolwireGuardrail``, a LiteLLM proxy ``CustomGuardrail``
  (the ``[litellm]`` extra), installed with a ``guardrails:`` entry of LiteLLM's
  ``config.yaml``. It imports LiteLLM, so it is imported only by name, by LiteLLM.

Like :mod:`toolwire.serve`, a gateway is a shell around the healing session
(:mod:`toolwire.heal.session`); the formats come from the provider registry.
"""

__all__: list[str] = []
