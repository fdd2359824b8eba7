"""What the Datastream client tests share besides fixtures."""

FOLLOW = {"interval": 0.1, "timeout": 15.0}  # how tests follow operations: poll often, give up late
