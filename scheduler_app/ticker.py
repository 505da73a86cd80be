"""Public import path of the in-process tick, the seam a project's own tests use (the code
lives in ``scheduler_app.dispatch``).

    from scheduler_app.clock import FakeClock
    from scheduler_app.ticker import Ticker

    Ticker(publisher, clock=FakeClock(...)).tick()
"""

from scheduler_app.dispatch.ticker import Every, Ticker, TickResult

__all__ = ["Every", "TickResult", "Ticker"]
