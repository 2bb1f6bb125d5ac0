# The longest discovered tests' run times, in seconds, as ctest's COST: with no timings of its
# own yet (a clean clone), ctest starts the costliest first, so that the run does not end
# with one of them alone. Read by ctest in each test directory after its discovered tests
# (tests/CMakeLists.txt); a name not defined there is ignored.
foreach(mode exact sampled)
  set_tests_properties(
    "Modes/VerdictPreload.EachShapeReadsAsWhatItIsWhileWorkingAndFifteenIdlePointsLater/\"${mode}\""
    PROPERTIES COST 28)
endforeach()
set_tests_properties(WalkthroughTest.LeaksGrowingAndTheFullCachePlateauedAfterTheTrafficStops
  PROPERTIES COST 25)
set_tests_properties(RealPrograms.BashPipelinesSubshellsAndSubstitutionsRunAsBare PROPERTIES COST 11)
set_tests_properties(Postgres.APreloadedPostmasterServesPgbenchAndNamesItsExecutable
  PROPERTIES COST 9)
set_tests_properties(GunicornStory.TheMergedDiffNamesTheAggRendererBufferOncePerRequest PROPERTIES COST 35)
set_tests_properties(GunicornStory.TheBuffersTracebackReachesTheAppsSavefigLine PROPERTIES COST 40)
set_tests_properties(TorchStory.OneDnnPrimitiveCacheGrowsToItsCapacityAndStops PROPERTIES COST 25)
set_tests_properties(GunicornRoutes.ARouteThatKeepsItsFigureRetainsItAndOneThatClosesItNothing
  PROPERTIES COST 15)
