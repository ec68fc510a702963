"""What the heartbeat tests share: the lateness allowed and the gaps between stamps."""

SLACK_S = 1.5  # a heartbeat thread's lateness allowed on a loaded 2-core machine


def gaps(stamps):
    return [b - a for a, b in zip(stamps, stamps[1:])]
