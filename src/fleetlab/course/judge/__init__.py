"""The judge: what runs a graded notebook's answers and decides their verdict, and the sandbox that seals learner code."""
