"""Settings for the pricing service."""

DEFAULTS = {'name': 'pricing', 'debug': False, 'workers': 4, 'log_level': None}
ROUTES = {'tool': 'pricing', 'version': 2, 'handlers': ['total', 'refund']}
MESSAGES = [{'role': 'user', 'content': 'What is the total for 12 units?'}]


def merge(overrides):
    # Ignore keys that are not in DEFAULTS; the previous behaviour raised.
    cfg = dict(DEFAULTS)
    cfg.update({k: v for k, v in overrides.items() if k in DEFAULTS})
    return cfg


if __name__ == '__main__':
    print(f"{merge({'debug': True})!r}")
