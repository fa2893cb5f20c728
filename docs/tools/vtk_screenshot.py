"""Render the last frame of an `impulse-lab ... --vtk-dir DIR` series to a PNG with
ParaView (pvpython or pvbatch): spheres glyphed by their `radius`, coloured by speed,
and the containers' mesh.

    pvbatch docs/tools/vtk_screenshot.py DIR OUT.png
"""

import sys

from paraview.simple import (
    ColorBy,
    GetActiveViewOrCreate,
    GetAnimationScene,
    Glyph,
    OpenDataFile,
    Render,
    ResetCamera,
    SaveScreenshot,
    Show,
    Calculator,
)

directory, out = sys.argv[1], sys.argv[2]
bodies = OpenDataFile(directory + "/bodies.pvd")
containers = OpenDataFile(directory + "/containers.vtu")
scene = GetAnimationScene()
scene.UpdateAnimationUsingDataTimeSteps()
scene.AnimationTime = bodies.TimestepValues[-1]

speed = Calculator(Input=bodies, ResultArrayName="speed", Function="mag(velocity)")
glyphs = Glyph(Input=speed, GlyphType="Sphere")
glyphs.ScaleArray = ["POINTS", "radius"]
glyphs.ScaleFactor = 2.0  # the glyph source is a sphere of diameter 1
glyphs.GlyphMode = "All Points"
glyphs.GlyphType.ThetaResolution = 16
glyphs.GlyphType.PhiResolution = 12

view = GetActiveViewOrCreate("RenderView")
view.ViewSize = [1200, 700]
view.Background = [1, 1, 1]
try:
    view.UseColorPaletteForBackground = 0
except AttributeError:
    pass
view.OrientationAxesVisibility = 1

walls = Show(containers, view)
walls.Representation = "Surface With Edges"
walls.Opacity = 0.25
walls.DiffuseColor = [0.6, 0.6, 0.65]
ColorBy(walls, None)

balls = Show(glyphs, view)
ColorBy(balls, ("POINTS", "speed"))
balls.RescaleTransferFunctionToDataRange(True)
balls.SetScalarBarVisibility(view, False)  # its labels need fonts pvbatch may lack

# From the front, a little to the side and above (z is up).
view.CameraFocalPoint = [0, 0, 12]
view.CameraPosition = [25, -95, 55]
view.CameraViewUp = [0, 0, 1]
Render(view)
SaveScreenshot(out, view, ImageResolution=[1200, 700])
print(out)
