from tucoll.cli import main

raise SystemExit(main())
