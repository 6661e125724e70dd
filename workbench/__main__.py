from workbench.main import main

main()
