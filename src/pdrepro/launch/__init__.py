"""Where a launch is rendered: a scenario and a site become a LaunchPlan (plan), and each target (targets/)
writes it as files plus the commands that run them; stack/ brings a plan up on this box.
"""
