from torture.multihost.run import main

raise SystemExit(main())
