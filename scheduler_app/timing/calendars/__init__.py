"""Calendar data the time engine consults: public holidays and solar events.

Each library is optional (extras ``holidays`` and ``solar``) and imported at module level in
its own module, guarded: without it the engine still runs every other kind of rule, and a
schedule that needs it is refused with the ``pip install`` line that brings it.
"""
