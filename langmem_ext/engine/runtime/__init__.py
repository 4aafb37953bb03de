"""How operations run: the sans-IO requests and their two runners
(:mod:`.requests`), the engine's settings and the store's capabilities
(:mod:`.config`), search planning (:mod:`.planning`), the per-call environment
(:mod:`.env`), the catalogue's declarations (:mod:`.catalogue`, worded by
:mod:`.wording`), metrics and the engine's machinery (:mod:`.engine_base`)."""
