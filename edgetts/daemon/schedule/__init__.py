"""Announcements on a timetable (issue 44): when each entry's occurrences fall (rules), which are due
on this device and when to render them (planner), what was played, kept across restarts (state),
the speech rendered ahead into the phrase cache (render), and the loop's hook (timetable)."""
