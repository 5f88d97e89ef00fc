from gpulens.cli import main

raise SystemExit(main())
