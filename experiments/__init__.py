"""GA-Net's studies: each declared as data in `experiments/studies.py`,
run and tabulated by `python -m experiments list|run NAME|table NAME`
(index of `results/`: `experiments/README.md`)."""
