"""The load ahead: how many slots every active schedule has, minute by minute, for the next days
(``counts``), and the picture of it an operator reads at a glance (``picture``). Read by
``manage.py schedule_forecast`` and the admin's "Load ahead" page."""
