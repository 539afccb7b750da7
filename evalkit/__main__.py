from evalkit._cli import main

raise SystemExit(main())
