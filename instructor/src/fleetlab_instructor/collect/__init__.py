"""Hand out, collect, hand back: the room's notebooks between the learners' homes and the facilitator.

``room``: the two ways into learners' homes (a JupyterHub's REST API, or the home folders on this
machine); ``manifest``: what a collect wrote and which notebook is late; ``exchange``: the three steps
(``hand_out``, ``collect``, ``return_feedback``), the entries of ``fleetlab handout``, ``collect`` and
``feedback return``.
"""
