"""The command line of the studies: list, run, table (`experiments/README.md`)."""

import argparse
import os
import sys


def main(argv=None):
    from experiments import study
    from experiments.studies import STUDIES as registry
    from experiments.studies import find

    parser = argparse.ArgumentParser(prog="python -m experiments", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="action", required=True)
    commands.add_parser("list", help="every declared study")
    run = commands.add_parser("run", help="train what is missing, then write the tables")
    run.add_argument("name")
    run.add_argument("--data-dir", default=os.environ.get("GANET_DATA_DIR", os.path.join("..", "shared", "data")))
    run.add_argument("--only", nargs="+", help="run names or patterns (fnmatch), e.g. 'trec_*_seed0'")
    run.add_argument("--results", default=study.RESULTS, help="results root (smoke runs: another folder)")
    run.add_argument("--dry-run", action="store_true", help="list the missing runs and their flags, train none")
    table = commands.add_parser("table", help="write the tables from the committed summaries")
    table.add_argument("names", nargs="+", help="studies, or `all`")
    argv = sys.argv[1:] if argv is None else list(argv)
    split = argv.index("--") if "--" in argv else len(argv)  # after `--`: flags added to every run
    args, options = parser.parse_args(argv[:split]), argv[split + 1 :]
    if args.action == "list":
        for name, entry in registry.items():
            models = " (tables need trained models)" if entry.needs_models else ""
            print(f"{name:20} results/{entry.folder}/  {entry.doc}{models}")
    elif args.action == "run":
        study.run_study(
            find(args.name), os.path.relpath(args.data_dir), args.only, options, args.results, args.dry_run, registry
        )
    else:
        for name in [n for n in registry if registry[n].rebuilt] if args.names == ["all"] else args.names:
            study.render_study(find(name))
            print(f"wrote results/{registry[name].folder}/", file=sys.stderr)


if __name__ == "__main__":
    main()
