from torture.run import main

raise SystemExit(main())
