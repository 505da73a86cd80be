"""Safety switches and limits: kill switches, approval, quotas."""
